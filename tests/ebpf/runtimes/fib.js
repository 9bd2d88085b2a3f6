// fib.js SECONDS: fib(25) over and over under caller for SECONDS seconds
// (default 5), for the eBPF sampler's Node.js test.
'use strict';

function fib(n) {
  return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

function caller(until) {
  let s = 0;
  while (Date.now() < until)
    s += fib(25);
  return s;
}

caller(Date.now() + Number(process.argv[2] || 5) * 1000);
