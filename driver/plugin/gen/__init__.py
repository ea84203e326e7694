"""Generated gRPC stubs for the kubelet protos in proto/ (hack/gen_protos.sh); do not edit."""
