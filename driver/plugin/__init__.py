"""gRPC edge of the kubelet plugin: registration, DRA v1/v1beta1 and health services; the only grpc importer."""
