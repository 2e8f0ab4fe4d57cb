module precisepeer

go 1.19
