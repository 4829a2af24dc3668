"""The demo's local tools: deterministic, no network, one of them needing approval."""

from __future__ import annotations

from typing import Literal

from toolwire.tool import Tool, tool

_FORECASTS = {"lisbon": (21, "sunny"), "oslo": (-3, "snow"), "nairobi": (24, "showers")}


@tool
def get_weather(
    city: str, units: Literal["celsius", "fahrenheit"] = "celsius"
) -> dict[str, object]:
    """Current weather for a city.

    Args:
        city: City name, e.g. "Lisbon".
        units: Temperature units.
    """
    celsius, sky = _FORECASTS.get(city.lower(), (15, "cloudy"))
    temperature = celsius if units == "celsius" else round(celsius * 9 / 5 + 32)
    return {"city": city, "temperature": temperature, "units": units, "sky": sky}


@tool(parallel_safe=False)
def set_alert(city: str, level: Literal["info", "warning", "severe"], note: str = "") -> str:
    """Publish a weather alert for a city (needs approval).

    Args:
        city: City name.
        level: How serious the alert is.
        note: Free text shown with the alert.
    """
    return f"{level} alert published for {city}" + (f": {note}" if note else "")


TOOLS: list[Tool] = [get_weather, set_alert]
