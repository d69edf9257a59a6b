module kuscia-host/bench

go 1.19
