"""Generated code: every module of this subpackage is written by tools/gen_protocol.py
(``make protocol``) and is never edited by hand.
"""
