module golabels

go 1.19
