# Two Ruby threads, each in its own method: a sample of one shows its frames,
# never the other's (tests/integration/ebpf_ruby.sh).

def spin_a(t_end)
  x = 0
  x += 1 while Process.clock_gettime(Process::CLOCK_MONOTONIC) < t_end
  x
end

def spin_b(t_end)
  x = 0
  x += 1 while Process.clock_gettime(Process::CLOCK_MONOTONIC) < t_end
  x
end

def alpha(t_end) = spin_a(t_end)
def beta(t_end) = spin_b(t_end)

t_end = Process.clock_gettime(Process::CLOCK_MONOTONIC) + (ARGV[0] || 5).to_f
a = Thread.new { alpha(t_end) }
b = Thread.new { beta(t_end) }
a.join
b.join
