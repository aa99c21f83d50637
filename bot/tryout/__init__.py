"""Try the GitHub App on this machine before registering anything: `python -m bot.tryout` starts a
loopback GitHub with a sample repository and an open pull request, the webhook receiver and both
workers against the local Redis, labels the pull request and shows what the App wrote. Local only:
nothing here is used by the App in production."""
