def foo(a, b):
    """Adds two numbers."""
    return a + b


if __name__ == "__main__":
    print(foo(2, 3))
