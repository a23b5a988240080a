from vdbguard.masking import mask, mask_if


def test_names_keep_initials_only() -> None:
    assert mask("John Smith") == "J*** S****"


def test_digits_are_fully_hidden() -> None:
    assert mask("123-45-6789") == "***-**-****"
    assert mask("call 555 0199") == "c*** *** ****"


def test_email_keeps_shape_not_content() -> None:
    masked = mask("jane.doe@example.com")
    assert masked == "j***.d**@e******.c**"
    assert "jane" not in masked and "example" not in masked


def test_mask_if_respects_the_switch() -> None:
    assert mask_if("Jane", False) == "Jane"
    assert mask_if("Jane", True) == "J***"
