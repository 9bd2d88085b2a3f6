# A Ruby method whose time is spent in a C library (zlib's deflate): the
# native frames stay beneath the Ruby ones (tests/integration/ebpf_ruby.sh).
require 'zlib'

def squeeze(data)
  Zlib::Deflate.deflate(data, Zlib::BEST_COMPRESSION)
end

def work(secs)
  data = (0...200_000).map { |i| (i * 7919 % 251).chr }.join
  t_end = Process.clock_gettime(Process::CLOCK_MONOTONIC) + secs
  squeeze(data) while Process.clock_gettime(Process::CLOCK_MONOTONIC) < t_end
end

work((ARGV[0] || 5).to_f)
