"""fedrl_kit.notebook.knobs: widgets that recompute on change and run nothing when created."""

import ipywidgets as widgets
import pytest

from fedrl_kit.notebook import knobs


def test_knobs_call_update_with_every_value_on_each_change_and_not_before():
    calls = []
    a, b = widgets.IntSlider(2, 0, 5), widgets.Dropdown(options=["x", "y"], value="x")
    box = knobs(lambda **kw: calls.append(kw), a=a, b=b)
    assert calls == []  # nothing runs (and nothing is drawn) when the widgets are created
    assert a.description == "a" and "fedrl-knobs" in box._dom_classes
    a.value = 4
    b.value = "y"
    assert calls == [{"a": 4, "b": "x"}, {"a": 4, "b": "y"}]
    with pytest.raises(ValueError, match="control"):
        knobs(lambda: None)


def test_a_page_without_a_kernel_shows_what_the_widget_is_not_its_python_repr():
    box = knobs(lambda client: None, client=widgets.Dropdown(options=["client_0", "client_1"]))
    shown = box._repr_mimebundle_()["text/plain"]
    assert shown == "(In Jupyter, controls here redraw the view above: client (client_0, client_1).)" and "HBox" not in shown
    slider = knobs(lambda L, M: None, L=widgets.IntSlider(5, min=1, max=20),
                   M=widgets.Dropdown(options=[("one", 1), ("two", 2), ("three", 3), ("four", 4), ("five", 5)]))
    assert slider._repr_mimebundle_()["text/plain"] == ("(In Jupyter, controls here redraw the view above: L (1–20); "
                                                         "M (one, two, three, four, …).)")
