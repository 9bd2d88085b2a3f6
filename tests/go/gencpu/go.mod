module gencpu

go 1.19
