"""Card generators: operator-controlled text for servers and tools."""

from cartograph.cards.generators.base import CardGenerator, GeneratorInfo, ServerText, ToolText
from cartograph.cards.generators.template import TemplateGenerator

__all__ = ["CardGenerator", "GeneratorInfo", "ServerText", "TemplateGenerator", "ToolText"]
