"""``python -m studyapp.configuration``: the table of docs/configuration.md, printed."""

from studyapp.configuration import table

print(table(), end="")
