"""The text a person reads: statements laid out as source lines with one comment per
user line and at most 100 columns, and the map from each generated line to the user's
line (``layout``)."""
