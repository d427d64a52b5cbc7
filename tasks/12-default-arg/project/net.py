import socket


def resolve(host, family=socket.AF_INET):
    return socket.getaddrinfo(host, None, family)


def connect(host, port=443, timeout=45, retries=2):
    return socket.create_connection((host, port), timeout=timeout)
