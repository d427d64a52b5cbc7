from net.headers import parse_header


def fetch(raw):
    name, value = parse_header(raw)
    return {name: value}
