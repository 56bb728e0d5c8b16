"""The models a search or fetch tool reads, and what it shows of each row."""

from __future__ import annotations

from typing import ClassVar

from django.db import models
from django.utils.translation import gettext_lazy as _

from mcp_tools.models.tools import Tool, checking


class SearchSource(models.Model):
    """One model a search or fetch tool covers: the fields a query looks in, the title, the text and the link."""

    class Link(models.TextChoices):
        PAGE = "page", _("The row's page (get_absolute_url)")
        PAGE_OR_ADMIN = "page_or_admin", _("The row's page, else its admin change page")
        ADMIN = "admin", _("Its admin change page")

    tool = models.ForeignKey(Tool, on_delete=models.CASCADE, related_name="sources", verbose_name=_("tool"))
    model = models.CharField(_("model"), max_length=200, help_text=_("app_label.ModelName"))
    search_fields = models.JSONField(
        _("search fields"), default=list, blank=True, help_text=_("Text fields a search query looks in.")
    )
    title_field = models.CharField(
        _("title field"),
        max_length=200,
        blank=True,
        help_text=_("The field each result is titled by. Blank: the model's name and the key, e.g. Order 12."),
    )
    text_fields = models.JSONField(
        _("text fields"), default=list, blank=True, help_text=_("The fields whose values make up a fetched text.")
    )
    link = models.CharField(_("link"), max_length=16, choices=Link.choices, default=Link.PAGE)
    max_results = models.PositiveIntegerField(
        _("maximum results"), default=10, help_text=_("The most rows of this model one search returns.")
    )
    scope = models.CharField(
        _("scope callable"),
        max_length=200,
        blank=True,
        help_text=_("A scope registered with @query_scope; scopes registered for the model always apply."),
    )

    class Meta:
        ordering: ClassVar = ["pk"]
        verbose_name = _("search source")
        verbose_name_plural = _("search sources")
        constraints: ClassVar = [models.UniqueConstraint(fields=["tool", "model"], name="mcp_tools_unique_source")]

    def __str__(self) -> str:
        return self.model

    def clean(self) -> None:
        super().clean()
        checking.send(sender=type(self), instance=self)
