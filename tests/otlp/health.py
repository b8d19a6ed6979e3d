"""Calls grpc.health.v1.Health/Check on HOST:PORT over plaintext gRPC (grpcio, which the OTLP
gRPC exporter installs) and prints the response's bytes in hex (`0801`: SERVING).

usage: health.py HOST:PORT
"""
import sys

import grpc

with grpc.insecure_channel(sys.argv[1]) as channel:
    check = channel.unary_unary("/grpc.health.v1.Health/Check")
    print(check(b"", timeout=10).hex())
