import unittest


class MathTest(unittest.TestCase):
    def test_add(self):
        self.assertEqual(1 + 1, 2)

    def test_sub(self):
        self.assertEqual(3 - 1, 2)

    def test_mul(self):
        self.assertEqual(2 * 3, 6)

    def test_div(self):
        self.assertEqual(6 / 3, 2)


class StringTest(unittest.TestCase):
    def test_upper(self):
        self.assertEqual("a".upper(), "A")

    def test_lower(self):
        self.assertEqual("A".lower(), "a")

    def test_strip(self):
        self.assertEqual(" a ".strip(), "a")
