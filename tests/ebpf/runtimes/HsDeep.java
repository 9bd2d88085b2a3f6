// The Java workload of tests/integration/ebpf_hotspot.sh: hot, three calls
// below main (main -> middle -> caller -> hot), run for the milliseconds
// given. No JVM flags: HotSpot compiles it without frame pointers and
// inlines caller and hot into middle.
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
		long end = System.currentTimeMillis() + Long.parseLong(args[0]);

		while (System.currentTimeMillis() < end)
			sink += middle(200000);
	}
}
