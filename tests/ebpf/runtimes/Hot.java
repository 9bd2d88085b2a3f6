// The Java workload of tests/integration/ebpf_runtimes.sh: Hot.spin is the
// hot method, run for the milliseconds given.
public class Hot {
	static long spin(long n) {
		long s = 0;
		for (long i = 0; i < n; i++)
			s += i * 31 ^ (s >>> 3);
		return s;
	}

	public static void main(String[] args) {
		long end = System.currentTimeMillis() + Long.parseLong(args[0]);
		long t = 0;
		while (System.currentTimeMillis() < end)
			t += spin(1000000);
		System.out.println(t == 42 ? "" : "done");
	}
}
