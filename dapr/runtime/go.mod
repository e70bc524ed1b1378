module troupe/dapr/runtime

go 1.26.6

require github.com/dapr/dapr v1.18.3

replace github.com/dapr/durabletask-go => github.com/dapr/durabletask-go v0.12.1
