"""Neural-network layers: ``Cell``, the layers and losses built on it, and optimizers."""
from .cell import Cell
from .activation import ReLU, Sigmoid, Softmax, Tanh, get_activation
from .basic import Dense, Flatten
from .container import SequentialCell
from .loss import BCEWithLogitsLoss, CrossEntropyLoss, LossBase, MSELoss
from .optim import Adam, Momentum, Optimizer, SGD

__all__ = ["Cell", "ReLU", "Sigmoid", "Softmax", "Tanh", "get_activation", "Dense",
           "Flatten", "SequentialCell", "LossBase", "BCEWithLogitsLoss",
           "CrossEntropyLoss", "MSELoss", "Optimizer", "SGD", "Momentum", "Adam"]
