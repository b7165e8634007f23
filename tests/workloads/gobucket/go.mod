module gobucket

go 1.19
