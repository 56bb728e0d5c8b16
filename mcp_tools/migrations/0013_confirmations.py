# Tools that exist keep running unconfirmed ("none") until their owner chooses; new tools default to confirming
# their writes ("").

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('mcp_tools', '0012_tool_kinds_and_config'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name='SpentConfirmation',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('nonce', models.CharField(max_length=32, unique=True, verbose_name='nonce')),
                ('expires_at', models.DateTimeField(db_index=True, verbose_name='expires')),
            ],
            options={
                'verbose_name': 'spent confirmation',
                'verbose_name_plural': 'spent confirmations',
            },
        ),
        migrations.AddField(
            model_name='tool',
            name='confirmation',
            field=models.CharField(blank=True, choices=[('', 'Default: the user confirms writes; reads run at once'), ('none', 'None: calls run at once'), ('user', 'The user confirms each call')], default='none', help_text='Whether a person must approve each call before it runs, after seeing what it will change. Default: calls that write (creates, updates, deletes, unsafe API actions, admin actions, callables marked destructive) ask the user; reads run at once.', max_length=16, verbose_name='confirmation'),
        ),
        migrations.AlterField(
            model_name='tool',
            name='confirmation',
            field=models.CharField(blank=True, choices=[('', 'Default: the user confirms writes; reads run at once'), ('none', 'None: calls run at once'), ('user', 'The user confirms each call')], default='', help_text='Whether a person must approve each call before it runs, after seeing what it will change. Default: calls that write (creates, updates, deletes, unsafe API actions, admin actions, callables marked destructive) ask the user; reads run at once.', max_length=16, verbose_name='confirmation'),
        ),
        migrations.AddField(
            model_name='toolcall',
            name='confirmation',
            field=models.CharField(blank=True, choices=[('', 'Not asked'), ('elicitation', 'The user, in the client (elicitation)')], default='', max_length=16, verbose_name='confirmed through'),
        ),
        migrations.AddField(
            model_name='toolcall',
            name='confirmed_by',
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL, verbose_name='confirmed by'),
        ),
        migrations.AlterField(
            model_name='toolcall',
            name='outcome',
            field=models.CharField(choices=[('ok', 'OK'), ('error', 'Tool error'), ('denied', 'Denied or unknown tool'), ('rate_limited', 'Rate limited'), ('invalid', 'Invalid arguments'), ('timeout', 'Timed out'), ('cancelled', 'Cancelled'), ('asked', 'Confirmation asked'), ('declined', 'Declined by the person'), ('unconfirmed', 'Not confirmed')], db_index=True, max_length=16, verbose_name='outcome'),
        ),
    ]
