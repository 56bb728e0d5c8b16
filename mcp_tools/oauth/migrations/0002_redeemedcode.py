import django.db.models.deletion
from django.db import migrations, models
from oauth2_provider.settings import oauth2_settings


class Migration(migrations.Migration):
    dependencies = [
        migrations.swappable_dependency(oauth2_settings.APPLICATION_MODEL),
        migrations.swappable_dependency(oauth2_settings.ACCESS_TOKEN_MODEL),
        ("mcp_tools_oauth", "0001_consent"),
    ]

    operations = [
        migrations.CreateModel(
            name="RedeemedCode",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("code_checksum", models.CharField(max_length=64, unique=True, verbose_name="code checksum")),
                ("token_family", models.UUIDField(blank=True, null=True, verbose_name="token family")),
                ("redeemed_at", models.DateTimeField(auto_now_add=True, verbose_name="redeemed")),
                ("expires", models.DateTimeField(db_index=True, verbose_name="remembered until")),
                (
                    "access_token",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to=oauth2_settings.ACCESS_TOKEN_MODEL,
                        verbose_name="first access token",
                    ),
                ),
                (
                    "application",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to=oauth2_settings.APPLICATION_MODEL,
                        verbose_name="application",
                    ),
                ),
            ],
            options={
                "verbose_name": "redeemed authorization code",
                "verbose_name_plural": "redeemed authorization codes",
            },
        ),
    ]
