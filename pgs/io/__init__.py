"""The svmlight / libsvm reader and writer."""
