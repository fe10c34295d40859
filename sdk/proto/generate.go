// Package proto holds the plugin protocol definitions. The generated Go code
// lives in sdk/pluginv1 and is committed, so vendors need no protoc.
//
// Regenerate with `go generate ./sdk/proto` (needs protoc, protoc-gen-go and
// protoc-gen-go-grpc on PATH:
// go install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12
// go install google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.6.2).
package proto

//go:generate protoc -I . --go_out=../pluginv1 --go_opt=module=github.com/ibsm/ibsm/sdk/pluginv1 --go-grpc_out=../pluginv1 --go-grpc_opt=module=github.com/ibsm/ibsm/sdk/pluginv1 ibsm/plugin/v1/plugin.proto ibsm/plugin/v1/data.proto ibsm/plugin/v1/kinds.proto
