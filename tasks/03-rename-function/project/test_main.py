import unittest

import main


class BarTest(unittest.TestCase):
    def test_adds(self):
        self.assertEqual(main.bar(2, 3), 5)


if __name__ == "__main__":
    unittest.main()
