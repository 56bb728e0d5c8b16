"""The demo's settings with REDIS_URL, and no socket read timeout on the channel layer's connections.

redis-py 8 reads with a 5 s socket timeout by default, and channels_redis waits for messages with a
5 s BZPOPMIN, so a listener that hears nothing for 5 s gets a redis TimeoutError instead of an empty
reply. Use this module to measure fan-out after sessions have been idle (or took over 5 s to open)::

    REDIS_URL=redis://127.0.0.1:6379/0 DJANGO_SETTINGS_MODULE=bench.settings_redis_no_timeout \\
        .venv/bin/uvicorn project.asgi:application --host 127.0.0.1 --port 8000 --no-access-log
"""

import os

from project.settings import *  # noqa: F403

CHANNEL_LAYERS = {
    "default": {
        "BACKEND": "channels_redis.core.RedisChannelLayer",
        "CONFIG": {"hosts": [{"address": os.environ["REDIS_URL"], "socket_timeout": None}]},
    }
}
