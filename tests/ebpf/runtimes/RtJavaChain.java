// The Java workload of tests/integration/rt_java.sh and bench-ebpf.sh's
// javaver: gammaSpin three calls below main (main -> alphaLevel ->
// betaLevel -> gammaSpin), run until its thread has had the CPU milliseconds
// given (at most the wall-clock milliseconds given). The test renames the
// class so that each JVM is a service of its own. No JVM flags: HotSpot
// compiles it without frame pointers and inlines what it likes.
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;

public class RtJavaChain {
	static volatile long sink;

	static long gammaSpin(long n) {
		long s = 0;
		for (long i = 0; i < n; i++)
			s += (i * i) ^ (s >>> 3);
		return s;
	}

	static long betaLevel(long n) {
		return gammaSpin(n) + 1;
	}

	static long alphaLevel(long n) {
		return betaLevel(n) + 2;
	}

	public static void main(String[] args) {
		ThreadMXBean tb = ManagementFactory.getThreadMXBean();
		long cpu = Long.parseLong(args[0]) * 1000000L;
		long end = System.currentTimeMillis() + Long.parseLong(args[1]);

		while (tb.getCurrentThreadCpuTime() < cpu && System.currentTimeMillis() < end)
			sink += alphaLevel(200000);
	}
}
