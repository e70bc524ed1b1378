module troupe.dev/bench/loadgen

go 1.22
