def join(parts):
    return "/".join(parts)
