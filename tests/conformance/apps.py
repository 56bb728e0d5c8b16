from django.apps import AppConfig


class ConformanceConfig(AppConfig):
    name = "tests.conformance"
    label = "conformance"
