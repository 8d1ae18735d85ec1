"""A turn's input items, built from plain values (pure)."""

from __future__ import annotations

from codexmini._inputs import as_input, image_input, text_input


def test_inputs_as_input_text():
    assert as_input("hi") == [{"type": "text", "text": "hi"}]
    assert text_input("x") == {"type": "text", "text": "x"}


def test_inputs_as_input_list_of_strings_and_items():
    image = image_input("/abs/pixel.png")
    assert image == {"type": "localImage", "path": "/abs/pixel.png"}
    items = as_input(["look at this", image, {"type": "image", "url": "data:image/png;base64,AAAA"}])
    assert items == [
        {"type": "text", "text": "look at this"},
        {"type": "localImage", "path": "/abs/pixel.png"},
        {"type": "image", "url": "data:image/png;base64,AAAA"},
    ]
    # Items are copied: normalising never aliases the caller's dicts.
    assert items[1] is not image


def test_inputs_as_input_empty_list():
    assert as_input([]) == []
