# Sourced by tests and benchmarks: per-sample-type sums of a profile as
# go tool pprof reads it. Prints "type/unit=sum" words, one per sample type.
pprof_sums() {
  go tool pprof -raw -symbolize=none "$@" 2>/dev/null | awk '
    /^Samples:/ { s = 1; getline; n = split($0, types, " "); next }
    /^Locations/ { s = 0 }
    s && /^ *-?[0-9]+( +-?[0-9]+)*:/ {
      sub(/:.*/, "")
      k = split($0, v, " ")
      for (i = 1; i <= k; i++) sum[i] += v[i]
    }
    END { for (i = 1; i <= n; i++) printf "%s=%.0f ", types[i], sum[i]; print "" }'
}
