"""Neural-network layers: ``Cell`` and the layers and losses built on it."""
from .cell import Cell
from .activation import ReLU, Sigmoid, Softmax, Tanh, get_activation
from .basic import Dense, Flatten
from .container import SequentialCell
from .loss import BCEWithLogitsLoss, CrossEntropyLoss, LossBase, MSELoss

__all__ = ["Cell", "ReLU", "Sigmoid", "Softmax", "Tanh", "get_activation", "Dense",
           "Flatten", "SequentialCell", "LossBase", "BCEWithLogitsLoss",
           "CrossEntropyLoss", "MSELoss"]
