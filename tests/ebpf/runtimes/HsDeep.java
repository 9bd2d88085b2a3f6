// The Java workload of tests/integration/ebpf_hotspot.sh: hot, three calls
// below main (main -> middle -> caller -> hot), run until its thread has had
// the CPU milliseconds given (at most the wall-clock milliseconds given), so
// that a busy host stretches the run rather than shortening the work. No JVM
// flags: HotSpot compiles it without frame pointers and inlines caller and
// hot into middle.
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;

public class HsDeep {
	static volatile long sink;

	static long hot(long n) {
		long s = 0;
		for (long i = 0; i < n; i++)
			s += (i * i) ^ (s >>> 3);
		return s;
	}

	static long caller(long n) {
		return hot(n) + 1;
	}

	static long middle(long n) {
		return caller(n) + 2;
	}

	public static void main(String[] args) {
		ThreadMXBean tb = ManagementFactory.getThreadMXBean();
		long cpu = Long.parseLong(args[0]) * 1000000L;
		long end = System.currentTimeMillis() + Long.parseLong(args[1]);

		while (tb.getCurrentThreadCpuTime() < cpu && System.currentTimeMillis() < end)
			sink += middle(200000);
	}
}
