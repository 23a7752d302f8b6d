module gpu-admission/bench/go-webhook

go 1.19
