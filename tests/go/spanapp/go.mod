module spanapp

go 1.19
