# The Ruby workload of tests/integration/ebpf_ruby.sh: fib is hot, called
# through work from the top level, for the seconds given.

def fib(n)
  n < 2 ? n : fib(n - 1) + fib(n - 2)
end

def work(secs)
  t_end = Process.clock_gettime(Process::CLOCK_MONOTONIC) + secs
  fib(18) while Process.clock_gettime(Process::CLOCK_MONOTONIC) < t_end
end

work((ARGV[0] || 5).to_f)
