"""How the test fixtures start the services no override names: ``PAREIS_TEST_STACK=auto|local|testcontainers``."""

from __future__ import annotations

import pytest

from tests.support.stack import STACK_ENV, StackError, stack_mode


def engine(reachable: bool):  # type: ignore[no-untyped-def]
    asked: list[bool] = []

    def probe() -> bool:
        asked.append(True)
        return reachable

    return probe, asked


@pytest.mark.parametrize("reachable", [True, False])
def test_an_explicit_mode_wins_and_asks_no_docker_engine(reachable: bool) -> None:
    for mode in ("local", "testcontainers"):
        probe, asked = engine(reachable)
        assert stack_mode({STACK_ENV: mode}, probe) == mode
        assert asked == []


@pytest.mark.parametrize("env", [{}, {STACK_ENV: "auto"}, {STACK_ENV: " "}], ids=["unset", "auto", "blank"])
def test_auto_uses_testcontainers_only_when_a_docker_engine_answers(env: dict[str, str]) -> None:
    assert stack_mode(env, engine(True)[0]) == "testcontainers"
    assert stack_mode(env, engine(False)[0]) == "local"


def test_an_unknown_mode_is_an_error_naming_the_choices() -> None:
    with pytest.raises(StackError, match=r"PAREIS_TEST_STACK='docker': expected one of auto, local, testcontainers"):
        stack_mode({STACK_ENV: "docker"}, engine(True)[0])
