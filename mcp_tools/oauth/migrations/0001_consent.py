import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models
from oauth2_provider.settings import oauth2_settings


class Migration(migrations.Migration):
    initial = True

    dependencies = [
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
        migrations.swappable_dependency(oauth2_settings.APPLICATION_MODEL),
        ("mcp_tools", "0011_isolation_and_visible_calls"),
    ]

    operations = [
        migrations.CreateModel(
            name="Consent",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                (
                    "reach",
                    models.CharField(
                        choices=[
                            ("all", "All my tools"),
                            ("read_only", "Read-only tools only"),
                            ("chosen", "Only the tools I choose"),
                        ],
                        default="all",
                        max_length=16,
                        verbose_name="tools",
                    ),
                ),
                ("updated_at", models.DateTimeField(auto_now=True, verbose_name="changed")),
                (
                    "application",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="mcp_consents",
                        to=oauth2_settings.APPLICATION_MODEL,
                        verbose_name="application",
                    ),
                ),
                (
                    "tools",
                    models.ManyToManyField(
                        blank=True,
                        help_text="Used only when the user chose the tools one by one.",
                        related_name="+",
                        to="mcp_tools.tool",
                        verbose_name="chosen tools",
                    ),
                ),
                (
                    "user",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="mcp_consents",
                        to=settings.AUTH_USER_MODEL,
                        verbose_name="user",
                    ),
                ),
            ],
            options={
                "verbose_name": "consent",
                "verbose_name_plural": "consents",
                "ordering": ["user", "application"],
                "constraints": [
                    models.UniqueConstraint(fields=("user", "application"), name="mcp_tools_oauth_one_consent_per_app")
                ],
            },
        ),
    ]
