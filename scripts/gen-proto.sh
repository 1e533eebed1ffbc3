#!/usr/bin/env bash
# Generates the TypeScript gRPC bindings with ts-proto (committed): the handler-launcher
# protocol (proto/kubevirt) into src/controllers/launcher-protocol/generated, the CSI spec
# (proto/csi) into src/controllers/csi-driver/generated, the kubelet's device-plugin API
# (proto-kubelet/deviceplugin) into src/controllers/virt-handler/device-plugin/generated,
# and its plugin-registration API (proto-kubelet/pluginregistration) into
# src/controllers/csi-driver/generated-kubelet.
set -euo pipefail
cd "$(dirname "$0")/.."
out=src/controllers/launcher-protocol/generated
rm -rf "$out" && mkdir -p "$out"
protoc --plugin=protoc-gen-ts_proto=./node_modules/.bin/protoc-gen-ts_proto \
  --ts_proto_out="$out" \
  --ts_proto_opt=outputServices=grpc-js,esModuleInterop=true,env=node,useOptionals=messages \
  -I proto $(find proto/kubevirt -name '*.proto' | sort)
out=src/controllers/csi-driver/generated
rm -rf "$out" && mkdir -p "$out"
protoc --plugin=protoc-gen-ts_proto=./node_modules/.bin/protoc-gen-ts_proto \
  --ts_proto_out="$out" \
  --ts_proto_opt=outputServices=grpc-js,esModuleInterop=true,env=node,useOptionals=messages \
  -I proto $(find proto/csi -name '*.proto' | sort)
out=src/controllers/virt-handler/device-plugin/generated
rm -rf "$out" && mkdir -p "$out"
protoc --plugin=protoc-gen-ts_proto=./node_modules/.bin/protoc-gen-ts_proto \
  --ts_proto_out="$out" \
  --ts_proto_opt=outputServices=grpc-js,esModuleInterop=true,env=node,useOptionals=messages \
  -I proto-kubelet $(find proto-kubelet/deviceplugin -name '*.proto' | sort)
out=src/controllers/csi-driver/generated-kubelet
rm -rf "$out" && mkdir -p "$out"
protoc --plugin=protoc-gen-ts_proto=./node_modules/.bin/protoc-gen-ts_proto \
  --ts_proto_out="$out" \
  --ts_proto_opt=outputServices=grpc-js,esModuleInterop=true,env=node,useOptionals=messages \
  -I proto-kubelet $(find proto-kubelet/pluginregistration -name '*.proto' | sort)
