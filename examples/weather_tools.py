"""Example tools: plain Python functions, declared once, usable with every provider.

``get_weather`` reads forecasts through the application's own service, handed to it as the
call's context (``toolwire.CallContext[Forecasts]``): the model never sees that parameter.

toolwire declare examples/weather_tools.py
toolwire declare examples/weather_tools.py --schema openapi
toolwire call examples/weather_tools.py get_weather --args '{"location": {"city": "Oslo"}}'
"""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

from pydantic import BaseModel, Field

from toolwire import CallContext, ToolSet, tool


class Units(StrEnum):
    CELSIUS = "celsius"
    FAHRENHEIT = "fahrenheit"


class Location(BaseModel):
    """A place on Earth."""

    city: str = Field(description="City name, e.g. 'Lisbon'.")
    country: str | None = Field(default=None, description="ISO 3166 country code.")


class Forecasts:
    """The application's forecast service (a stand-in: every day is sunny)."""

    def days(self, city: str, days: int) -> list[str]:
        return ["sunny"] * days


@tool(annotations={"readOnlyHint": True})  # it only reads: `toolwire call` runs it unasked
def get_weather(
    context: CallContext[Forecasts],
    location: Location,
    units: Units = Units.CELSIUS,
    days: int = 1,
) -> dict[str, object]:
    """Current weather and a short forecast.

    Args:
        location: Where to look.
        units: Temperature units.
        days: How many days of forecast, 1 to 7.
    """
    forecasts = context.deps or Forecasts()  # the stand-in when none is given (`toolwire call`)
    forecast = forecasts.days(location.city, days)
    return {"city": location.city, "units": units.value, "forecast": forecast}


@tool(parallel_safe=False)
async def set_alert(city: str, level: Literal["info", "warning", "severe"], note: str = "") -> str:
    """Create a weather alert for a city.

    Args:
        city: City name.
        level: How serious the alert is.
        note: Free text shown with the alert.
    """
    return f"{level} alert set for {city}"


@tool(annotations={"readOnlyHint": True})
def list_stations(tags: list[str] | None = None) -> list[str]:
    """List the weather stations, optionally only those with all the given tags."""
    return ["LIS-01", "OPO-02"]


toolset = ToolSet([get_weather, set_alert, list_stations])
