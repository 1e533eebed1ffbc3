#!/usr/bin/env bash
# Generates the TypeScript gRPC bindings of the handler-launcher protocol (proto/) with
# ts-proto, into src/controllers/launcher-protocol/generated (committed).
set -euo pipefail
cd "$(dirname "$0")/.."
out=src/controllers/launcher-protocol/generated
rm -rf "$out" && mkdir -p "$out"
protoc --plugin=protoc-gen-ts_proto=./node_modules/.bin/protoc-gen-ts_proto \
  --ts_proto_out="$out" \
  --ts_proto_opt=outputServices=grpc-js,esModuleInterop=true,env=node,useOptionals=messages \
  -I proto $(find proto -name '*.proto' | sort)
