"""zh-hans number formats for the portal (FORMAT_MODULE_PATH); Django's own for the rest.

Django ships zh-hans with no thousands separator and 4-digit grouping, so "10240 张卡" and
"132084" are hard to read in tables of large figures. Mainland technical and financial text
groups by three with a comma (as GB/T 15835 allows), which is what operators asked for.
"""

DECIMAL_SEPARATOR = "."
THOUSAND_SEPARATOR = ","
NUMBER_GROUPING = 3
