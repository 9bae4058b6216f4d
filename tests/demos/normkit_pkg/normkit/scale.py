"""normkit's weight helper (test data)."""


def unit(weight):
    return weight.float()
