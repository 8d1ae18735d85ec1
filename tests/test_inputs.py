"""A turn's input items, built from plain values (pure)."""

from __future__ import annotations

import pytest

from codexmini import ConfigError
from codexmini._inputs import INPUT_KINDS, as_input, image_input, text_input


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


def test_inputs_every_helper_builds_an_item_of_its_kind_that_as_input_accepts():
    from codexmini import image_url_input, mention_input, skill_input

    items = [
        image_url_input("data:image/png;base64,AAAA"),
        skill_input("review", "/skills/review/SKILL.md"),
        mention_input("notes", "/ws/notes.md"),
        {"type": "image", "fileId": "file_1"},
        {"type": "audio", "url": "data:audio/wav;base64,AAAA"},
    ]
    assert as_input(items) == items
    assert [i["type"] for i in items[:3]] == ["image", "skill", "mention"]
    assert set(INPUT_KINDS) == {"text", "localImage", "image", "skill", "mention", "audio"}


@pytest.mark.parametrize(
    "value, message",
    [
        ([{"type": "local_image", "path": "/a.png"}], "input[0] has type 'local_image' (did you mean 'localImage'?)"),
        (["x", {"type": "picture"}], "input[1] has type 'picture': an input item's type is one of text, localImage"),
        ([{"path": "/a.png"}], "input[0] has type None: an input item's type is one of"),
        ([{"type": ["text"]}], "input[0] has type ['text']: an input item's type is one of"),
        ([{"type": "image", "path": "/a.png"}], "input[0]: an item of type 'image' needs 'url' or 'fileId' (a string)"),
        ([{"type": "skill", "name": "review"}], "input[0]: an item of type 'skill' needs 'path' (a string)"),
        ([{"type": "text", "text": 3}], "input[0]: an item of type 'text' needs 'text' (a string)"),
        ([3], "input[0] must be a string or an input item (a dict), not int"),
        (b"hello", "input must be a string or a list of strings and input items, not bytes"),
        ({"type": "text", "text": "x"}, "input must be a string or a list of strings and input items, not dict"),
        (3, "input must be a string or a list of strings and input items, not int"),
    ],
)
def test_inputs_what_codex_would_refuse_is_a_config_error_saying_what_to_write(value, message):
    with pytest.raises(ConfigError) as caught:
        as_input(value)
    assert str(caught.value).startswith(message)


@pytest.mark.parametrize(
    "written, meant",
    [("local_image", "localImage"), ("localimage", "localImage"), ("image_url", "image"), ("input_text", "text")],
)
def test_inputs_a_kind_people_write_for_another_names_the_one_meant(written, meant):
    with pytest.raises(ConfigError, match=f"has type '{written}' \\(did you mean '{meant}'\\?\\)"):
        as_input([{"type": written}])


def test_inputs_an_audio_item_by_file_id():
    assert as_input([{"type": "audio", "fileId": "file_2"}]) == [{"type": "audio", "fileId": "file_2"}]
