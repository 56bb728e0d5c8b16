"""Admin-action tools: the actions the site's own ModelAdmins offer, run as the admin runs them for the caller.

``offered`` lists the actions of the site's admin and says which a tool can run; ``spec`` turns a tool's
configuration into what a call needs; ``messages`` collects what the admin would show; ``run`` runs one call.
"""
