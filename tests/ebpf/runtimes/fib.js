// fib.js SECONDS: fib(25) over and over under caller until the process has
// used SECONDS of CPU time (default 3), for the eBPF sampler's Node.js
// test: CPU time, not wall time, so that node's start-up keeps the same
// share of the samples however busy the host is.
'use strict';

function fib(n) {
  return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

function caller(until) {
  let s = 0;
  while (process.cpuUsage().user < until)
    s += fib(25);
  return s;
}

caller(Number(process.argv[2] || 3) * 1e6);
