"""What tests/real/python.sh's program keeps: a cache that grows, and the
instances of a class with __slots__, each with a payload string."""


class Record:
    __slots__ = ("key", "payload")

    def __init__(self, key, payload):
        self.key = key
        self.payload = payload


class Store:
    def __init__(self):
        self.cache = {}
        self.records = []

    def remember(self, key, value):
        self.cache[key] = (key, value, "v%08d" % value * 4)

    def keep(self, key, i):
        self.records.append(Record(key, "payload-%010d" % i))
