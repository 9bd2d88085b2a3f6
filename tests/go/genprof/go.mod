module profilefs/tests/genprof

go 1.19
