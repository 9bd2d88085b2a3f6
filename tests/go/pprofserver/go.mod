module profilefs/tests/pprofserver

go 1.19
